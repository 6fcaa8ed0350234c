-- A refused send under another name (`a2a_sender_mismatch`) and a refused result
-- (`a2a_result_rejected`) keep the task id they claimed in their body only, never as the row's
-- task (`src/mailbox/audit.rs`, `filed`): nobody fills another's task history with refusals.
-- The rows written before that rule leave the tasks they named.
UPDATE audit SET task_id = NULL
WHERE task_id IS NOT NULL AND kind IN ('a2a_sender_mismatch', 'a2a_result_rejected');
