"""The models of the settings a user writes, one module per subject: views (`views`), bearer tokens
and request limits (`auth`), a view's hooks (`hooks`) and composite tools (`composites`), the call
log (`call_log`). `skillshelf.settings` assembles them into the one `Settings`.

Pure data: the server and the CLI read them; nothing here imports the MCP SDK.
"""
