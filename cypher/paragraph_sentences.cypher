// paragraph_sentences: every sentence of the given paragraphs, via (:Paragraph)-[:CONTAINS]->(:Sentence).
// Parameters:
//   $paragraph_ids: list<string>  paragraph ids (unknown ids are skipped)
// Returns: paragraph_id, id, position (int), title, text
// Order: paragraph_id, position, id
UNWIND $paragraph_ids AS pid
WITH DISTINCT pid
MATCH (p:Paragraph {id: pid})-[:CONTAINS]->(s:Sentence)
RETURN p.id AS paragraph_id, s.id AS id, s.position AS position, s.title AS title, s.text AS text
ORDER BY paragraph_id, position, id
