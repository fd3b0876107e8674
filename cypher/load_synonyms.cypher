// load_synonyms: (:Entity)-[:SYNONYM {kind, score}]->(:Entity), stored once src->dst and read undirected.
// kind is part of the MERGE key (a pair linked by two rules keeps one edge per rule); idempotent.
// Parameters:
//   $rows: list<map>  {src: string, dst: string, kind: 'canonical'|'title'|'abbreviation'|'embedding',
//                      score: float (1.0 for rule-based links, cosine for 'embedding')}
// Returns: nothing
UNWIND $rows AS r
MATCH (a:Entity {id: r.src})
MATCH (b:Entity {id: r.dst})
MERGE (a)-[y:SYNONYM {kind: r.kind}]->(b)
SET y.score = r.score
