-- Tells every replica listening on the wake-up channel that claimable work may exist.
-- $1 channel (store::WAKEUP_CHANNEL). Delivered at commit when run in a transaction.
-- Locks: none.
SELECT pg_notify($1, '')
