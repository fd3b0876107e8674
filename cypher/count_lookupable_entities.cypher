// count_lookupable_entities: how many entities may be LOOKUP targets (lookupable = true).
// Parameters: none
// Returns: count (int), one row
MATCH (e:Entity)
WHERE e.lookupable = true
RETURN count(e) AS count
