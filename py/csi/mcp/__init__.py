"""Tools from MCP servers: the client (``client``), one JSON-RPC exchange (``exchange``) and the
servers connected per namespace for skills (``namespaces``)."""
