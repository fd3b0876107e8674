// load_contains: (:Paragraph)-[:CONTAINS {position}]->(:Sentence) between already loaded endpoints
// (idempotent: one edge per paragraph/sentence pair; rows whose endpoints are missing are skipped).
// Parameters:
//   $rows: list<map>  {id: string (sentence id), paragraph_id: string, position: int}
// Returns: nothing
UNWIND $rows AS r
MATCH (p:Paragraph {id: r.paragraph_id})
MATCH (s:Sentence {id: r.id})
MERGE (p)-[c:CONTAINS]->(s)
SET c.position = r.position
