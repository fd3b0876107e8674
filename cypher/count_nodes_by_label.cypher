// count_nodes_by_label: node count of each label of the graph schema. A label the graph has never held may
// yield no row (FalkorDB drops it inside the UNION); the store reports it as 0.
// Parameters: none
// Returns: label (string), count (int)
// Order: label
CALL {
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
