"""``memdex serve``: one resident process per index -- the watcher, the model and vectors
loaded once, a Unix socket the command line asks first, and HTTP (JSON and MCP) for a team.

``client`` is imported by every ``memdex`` command before anything else, so it and this
package import nothing but the standard library."""
