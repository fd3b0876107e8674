// nodes_by_internal_ids: the graph id (n.id) of nodes given by FalkorDB's internal node ids, e.g. the endpoints
// of a relationship a user query returned without its nodes (harness-g browse --cypher).
// Parameters:
//   $ids: list<int>  internal node ids (id(n)); unknown ids are skipped
// Returns: internal_id (int), id (the node's id property; null for nodes without one, e.g. GraphMeta)
// Order: internal_id
UNWIND $ids AS nid
WITH DISTINCT nid
MATCH (n)
WHERE id(n) = nid
RETURN id(n) AS internal_id, n.id AS id
ORDER BY internal_id
