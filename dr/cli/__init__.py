"""The command line: the top layer. Parses arguments, calls the jobs, prints, picks exit codes."""
