// paragraphs_by_ids: fetch paragraphs by id (unknown ids are skipped, duplicates collapse).
// Parameters:
//   $ids: list<string>  paragraph ids ("p_<hash>"); other strings simply match nothing
// Returns: id, title, text, source (string or null)
// Order: id
UNWIND $ids AS pid
WITH DISTINCT pid
MATCH (p:Paragraph {id: pid})
RETURN p.id AS id, p.title AS title, p.text AS text, p.source AS source
ORDER BY id
