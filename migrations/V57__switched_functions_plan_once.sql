-- V57: every function that turns a plan type off also plans its statements once per
-- session. Forward-only: never edit once landed.
--
-- A function that sets enable_seqscan or enable_bitmapscan to off has PostgreSQL
-- choose between a generic plan of each of its statements and a plan made for the
-- call's values; with a path turned off the generic plan's estimate can carry the
-- 10^10 of a disabled path, so the plan cache keeps choosing the custom plan and plans
-- the statement again at every call. Measured on PostgreSQL 15 with one single submit
-- a transaction: tasklane.hold_floors took 59 us a call against 20 us for the same body
-- without the setting, and 20 us with the setting and plan_cache_mode set to
-- force_generic_plan; the single submit (tasklane.submit_task with the mirror's insert
-- trigger, tasklane.hold_floors, tasklane.take_turns and tasklane.active_subjects)
-- went from 1.93-2.05 ms to 1.73-1.76 ms a call, round trip and commit included. The
-- claim's functions, the group commit's and the webhook claim already plan
-- generically; these are the rest: the submit's turns and floors, the mirror's update
-- trigger and the claim's marking of its rows, the floors' and points' raises, and the
-- delete triggers of pruning. Their statements read by index, which is what the
-- generic plan made with the same switches off does; only when it is planned changes.

ALTER FUNCTION tasklane.take_turns(uuid[], text[], smallint[], text[], text[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.active_subjects(text, smallint, text, double precision, integer, text[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.hold_floors(text[], smallint[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.floors_of(text)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.sync_task_queue()
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.mirror_claimed(uuid[], timestamptz[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.raise_points(text[], smallint[], double precision[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.raise_floors(text[], smallint[], double precision[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.delete_task_events()
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.delete_task_deliveries()
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.delete_task_attempts()
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tasklane.delete_task_queue()
    SET plan_cache_mode = force_generic_plan;
