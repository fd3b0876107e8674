// sentences_by_ids: fetch sentences by id (unknown ids are skipped, duplicates collapse).
// Parameters:
//   $ids: list<string>  sentence ids ("<paragraph id>:<position>")
// Returns: id, paragraph_id, position (int, 0-based within the paragraph), title, text
// Order: paragraph_id, position, id
UNWIND $ids AS sid
WITH DISTINCT sid
MATCH (s:Sentence {id: sid})
RETURN s.id AS id, s.paragraph_id AS paragraph_id, s.position AS position, s.title AS title, s.text AS text
ORDER BY paragraph_id, position, id
