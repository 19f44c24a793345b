-- Fair turns: claims share each priority level among apps, and within an app among its
-- usage subjects, instead of taking the oldest task first.
--
-- An app's weight: its share of the turns against the other apps with claimable work
-- (an app without a row weighs 1). Read when a task takes its turn, so a new weight
-- applies to the tasks that become claimable after it is set.
CREATE TABLE tasklane.app_weights (
    app        text PRIMARY KEY CHECK (app <> ''),
    weight     smallint NOT NULL CHECK (weight BETWEEN 1 AND 100),
    updated_at timestamptz NOT NULL DEFAULT now()
);
