"""The doors: the CLI, the MCP server, Datasette, batch searches, and how results are rendered."""
