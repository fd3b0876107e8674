// load_next: (:Sentence)-[:NEXT]->(:Sentence) from each sentence to the following one in its paragraph
// (pairs are derived by the loader from sentences sorted by (paragraph_id, position); idempotent).
// Parameters:
//   $rows: list<map>  {src: string, dst: string}  sentence ids, src precedes dst
// Returns: nothing
UNWIND $rows AS r
MATCH (a:Sentence {id: r.src})
MATCH (b:Sentence {id: r.dst})
MERGE (a)-[:NEXT]->(b)
