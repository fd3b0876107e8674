// clear_batch: delete up to $limit nodes with their relationships; run until it reports 0 to empty the graph
// (batched so one transaction never holds the whole graph).
// Parameters:
//   $limit: int  nodes per batch
// Returns: deleted (int), one row
MATCH (n)
WITH n LIMIT $limit
DETACH DELETE n
RETURN count(*) AS deleted
