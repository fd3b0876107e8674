// count_nodes_by_label (Neo4j): node count of each label of the graph schema; same rows as the shared file,
// whose bare CALL { } subquery Neo4j 5.23+ reports as deprecated on every call (FalkorDB rejects the
// CALL () { } variable-scope form, so only Neo4j gets it). A label with nothing to count
// yields no row (its name literal is a grouping key); the store reports it as 0.
// Parameters: none
// Returns: label (string), count (int)
// Order: label
CALL () {
  MATCH (n:Paragraph) RETURN 'Paragraph' AS label, count(n) AS count
  UNION ALL
  MATCH (n:Sentence) RETURN 'Sentence' AS label, count(n) AS count
  UNION ALL
  MATCH (n:Entity) RETURN 'Entity' AS label, count(n) AS count
  UNION ALL
  MATCH (n:GraphMeta) RETURN 'GraphMeta' AS label, count(n) AS count
}
RETURN label, count
ORDER BY label
