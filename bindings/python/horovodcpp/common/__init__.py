"""What every framework front end shares: the job's lifetime, topology,
reduction ops, errors and process sets."""
