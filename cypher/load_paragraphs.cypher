// load_paragraphs: upsert Paragraph nodes (idempotent: MERGE on id, then SET every property).
// Parameters:
//   $rows: list<map>  {id: string, title: string, text: string, source: string|null}
// Returns: nothing
UNWIND $rows AS r
MERGE (p:Paragraph {id: r.id})
SET p.title = r.title, p.text = r.text, p.source = r.source
