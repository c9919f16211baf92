"""HTTP pieces both servers share: the error JSON, CORS, keys, streams, sockets, header spelling."""
