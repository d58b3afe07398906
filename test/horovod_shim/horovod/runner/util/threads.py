"""horovod.runner.util.threads.in_thread, which Horovod's test helpers use."""
import threading


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Runs target(*args) in a started thread and returns the thread;
    `silent` swallows the exception the target raises."""
    def run():
        try:
            target(*args)
        except Exception:
            if not silent:
                raise
    thread = threading.Thread(target=run, name=name, daemon=daemon)
    thread.start()
    return thread
