"""The storage file format: layout, checked reading, encoding and decoding, handles and descriptions.

Nothing is imported here: the worker process imports ``reader`` and ``layout`` (standard library
only) and must not pay for numpy.
"""
