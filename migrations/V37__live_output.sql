-- The text so far of each running model call, for observers of a task's live output
-- that join late or missed notifications (the deltas themselves are only NOTIFYed on
-- tasklane_output, never stored). One row per task: the attempt running it; the
-- replica running the attempt writes it at most every 250 ms, for all its attempts in
-- one statement, and deletes it when the attempt ends. UNLOGGED: the text is worth
-- nothing after a crash (the attempt it belongs to is over), so it writes no WAL, is
-- not replicated, and is emptied by crash recovery. No foreign key: a row is short
-- lived, and a cascade would cost every task delete a lookup here.
CREATE UNLOGGED TABLE tasklane.task_output (
    task_id    uuid PRIMARY KEY,
    attempt    integer NOT NULL CHECK (attempt >= 1),
    text       text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
