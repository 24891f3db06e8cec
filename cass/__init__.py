"""The CASS pipeline library: the work of every DVC stage (stages/ only calls it), by domain, and the
`cass` command line (cli)."""
