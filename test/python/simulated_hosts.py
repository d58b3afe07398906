"""hvd.is_homogeneous() and the transport queries on jobs that pretend to
span several hosts: this script starts Gloo ranks itself (no hvdrun), each
told its place by HOROVODCPP_RANK ... _CROSS_SIZE as a launcher on several
hosts would, meeting through a file store on loopback.

    /usr/bin/python3 simulated_hosts.py      (PYTHONPATH: the built package)

Exits non-zero naming the layout and rank that disagreed."""
import json
import os
import subprocess
import sys
import tempfile

LAYOUTS = {  # ranks per host -> is_homogeneous()
    (2, 1): False,
    (1, 2): False,
    (1, 1): True,
    (2, 2): True,
}


def places(layout):
    """Each rank's (local_rank, local_size, cross_rank, cross_size), hosts
    in order, ranks numbered host by host (as hvdrun numbers them)."""
    result = []
    for host, count in enumerate(layout):
        for local in range(count):
            peers = [h for h, c in enumerate(layout) if c > local]  # hosts with this local rank
            result.append((local, count, peers.index(host), len(peers)))
    return result


def child():
    from horovodcpp.common import basics as hvd  # what horovodcpp.torch re-exports
    hvd.init()
    print(json.dumps({"rank": hvd.rank(), "homogeneous": hvd.is_homogeneous(),
                      "gloo": hvd.gloo_enabled() and not hvd.mpi_enabled()}), flush=True)
    hvd.shutdown()


def run(layout):
    ranks = places(layout)
    with tempfile.TemporaryDirectory() as store:
        procs = []
        for rank, (local_rank, local_size, cross_rank, cross_size) in enumerate(ranks):
            env = dict(os.environ, HOROVODCPP_CPU_OPERATIONS="gloo",
                       HOROVODCPP_HOSTNAME="127.0.0.1",
                       HOROVODCPP_GLOO_FILE_STORE=store, HOROVODCPP_GLOO_TIMEOUT_SECONDS="20",
                       HOROVODCPP_RANK=str(rank), HOROVODCPP_SIZE=str(len(ranks)),
                       HOROVODCPP_LOCAL_RANK=str(local_rank),
                       HOROVODCPP_LOCAL_SIZE=str(local_size),
                       HOROVODCPP_CROSS_RANK=str(cross_rank),
                       HOROVODCPP_CROSS_SIZE=str(cross_size))
            procs.append(subprocess.Popen([sys.executable, __file__, "--child"], env=env,
                                          stdout=subprocess.PIPE, text=True))
        reports = []
        for rank, proc in enumerate(procs):
            out, _ = proc.communicate(timeout=60)
            if proc.returncode != 0:
                sys.exit("layout {}: rank {} exited with {}".format(layout, rank, proc.returncode))
            reports.append(json.loads(out.strip().splitlines()[-1]))
    for rank, report in enumerate(reports):
        expected = {"rank": rank, "homogeneous": LAYOUTS[layout], "gloo": True}
        if report != expected:
            sys.exit("layout {}: rank {} reported {}, expected {}".format(
                layout, rank, report, expected))
    print("layout {}: is_homogeneous() == {} on all {} ranks".format(
        list(layout), LAYOUTS[layout], len(reports)))


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        child()
    else:
        for layout in LAYOUTS:
            run(layout)
