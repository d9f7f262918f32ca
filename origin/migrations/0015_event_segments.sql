-- Event dimensions (issue 41): the values an event carries for its boards' event dimensions
-- (`platform:ios`), in the event's own row, so an event with them is stored by the same one
-- statement as any other (a table beside the log cost a statement per group and the writer's
-- one-statement path). NULL for an event without them. Not personal data: an erasure leaves
-- them.
ALTER TABLE score_events ADD COLUMN segments TEXT;
