// edges_among: every relationship whose two endpoints are both in a given node set, for drawing that set
// (harness-g browse). One list holds the paragraph, sentence and entity ids together (their id forms differ).
//   CONTAINS  paragraph -> sentence      NEXT     sentence -> next sentence
//   MENTIONS  sentence -> entity (one row per pair, however many mentions)
//   SYNONYM   entity -> entity, as stored (src -> dst), one row per rule (kind)
// Parameters:
//   $ids: list<string>  paragraph, sentence and entity ids (unknown ids match nothing)
// Returns: src, dst (ids), type ('CONTAINS'|'NEXT'|'MENTIONS'|'SYNONYM'), kind (SYNONYM rule, else null)
// Order: none across the four UNION parts; the caller sorts (harness_g.agent.eval.browse sorts by type, src, dst)
// The far endpoint is unlabelled: with a label FalkorDB may plan a label scan instead of the id index seek.
UNWIND $ids AS nid
WITH DISTINCT nid
MATCH (a:Paragraph {id: nid})-[:CONTAINS]->(b)
WHERE b.id IN $ids
RETURN DISTINCT a.id AS src, b.id AS dst, 'CONTAINS' AS type, null AS kind
UNION ALL
UNWIND $ids AS nid
WITH DISTINCT nid
MATCH (a:Sentence {id: nid})-[:NEXT]->(b)
WHERE b.id IN $ids
RETURN DISTINCT a.id AS src, b.id AS dst, 'NEXT' AS type, null AS kind
UNION ALL
UNWIND $ids AS nid
WITH DISTINCT nid
MATCH (a:Sentence {id: nid})-[:MENTIONS]->(b)
WHERE b.id IN $ids
RETURN DISTINCT a.id AS src, b.id AS dst, 'MENTIONS' AS type, null AS kind
UNION ALL
UNWIND $ids AS nid
WITH DISTINCT nid
MATCH (a:Entity {id: nid})-[r:SYNONYM]->(b)
WHERE b.id IN $ids
RETURN DISTINCT a.id AS src, b.id AS dst, 'SYNONYM' AS type, r.kind AS kind
