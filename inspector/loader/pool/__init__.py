"""The worker pool: worker processes, shared-memory segments, the I/O and delivery threads.

Nothing is imported here: a worker process imports ``worker_process`` (standard library only)
and must not pay for numpy or the rest of the pool.
"""
