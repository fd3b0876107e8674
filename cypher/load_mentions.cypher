// load_mentions: (:Sentence)-[:MENTIONS {surface, start, end, kind}]->(:Entity) between loaded endpoints.
// One edge per mention: (start, end, kind) are part of the MERGE key so an entity mentioned twice in a
// sentence keeps two edges, and re-running never duplicates one.
// Parameters:
//   $rows: list<map>  {sentence_id: string, entity_id: string, surface: string, start: int, end: int,
//                      kind: 'ner'|'title'|'title_mention'}   start/end: character offsets into the sentence text
// Returns: nothing
UNWIND $rows AS r
MATCH (s:Sentence {id: r.sentence_id})
MATCH (e:Entity {id: r.entity_id})
MERGE (s)-[m:MENTIONS {start: r.start, `end`: r.`end`, kind: r.kind}]->(e)
SET m.surface = r.surface
