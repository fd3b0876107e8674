// delta_delete_mentions: remove MENTIONS edges an append made obsolete (graph/append.py), matched on the
// load_mentions MERGE key (idempotent: an edge already gone matches nothing).
// Parameters:
//   $rows: list<map>  {sentence_id: string, entity_id: string, start: int, end: int,
//                      kind: 'ner'|'title'|'title_mention'}   (other keys are ignored)
// Returns: nothing
UNWIND $rows AS r
MATCH (s:Sentence {id: r.sentence_id})-[m:MENTIONS {start: r.start, `end`: r.`end`, kind: r.kind}]->(e:Entity {id: r.entity_id})
DELETE m
