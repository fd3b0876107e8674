// pool_samples_get: every hub sample the graph holds (what build --append compares its new samples with).
// Parameters: none
// Returns: id (entity id), sample (list<string>: sentence ids in sample-key order)
// Order: id
MATCH (e:Entity)
WHERE e.pool_sample IS NOT NULL
RETURN e.id AS id, e.pool_sample AS sample
ORDER BY id
