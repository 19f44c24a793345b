-- The process id of this session's backend, to find the server's processes by in /proc
-- (its parent is the postmaster). No parameters. Locks: none.
SELECT pg_backend_pid()
