// load_sentences (Neo4j): upsert Sentence nodes with their embedding as a list of floats (idempotent: MERGE on id).
// Parameters:
//   $rows: list<map>  {id: string, paragraph_id: string, position: int, title: string, text: string,
//                      embedding: list<float> (L2-normalised, the artifact's embedding_dim)}
// Returns: nothing
UNWIND $rows AS r
MERGE (s:Sentence {id: r.id})
SET s.paragraph_id = r.paragraph_id, s.position = r.position, s.title = r.title, s.text = r.text,
    s.embedding = r.embedding
