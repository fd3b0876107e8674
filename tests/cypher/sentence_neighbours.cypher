// sentence_neighbours: N_SS, the previous and next sentence of each given sentence (NEXT edges, either direction).
// Parameters:
//   $ids: list<string>  sentence ids
// Returns: source_id (the given sentence), id (its neighbour), direction ('previous'|'next'), position (neighbour's, int)
// Order: source_id, position, id  (so a sentence's previous neighbour comes before its next one)
UNWIND $ids AS sid
WITH DISTINCT sid
MATCH (s:Sentence {id: sid})-[:NEXT]-(n:Sentence)
RETURN DISTINCT s.id AS source_id, n.id AS id,
       CASE WHEN n.position < s.position THEN 'previous' ELSE 'next' END AS direction,
       n.position AS position
ORDER BY source_id, position, id
