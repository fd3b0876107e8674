// create_vector_index (Neo4j 5.15+, where CREATE VECTOR INDEX appeared): vector index sentence_embedding
// over Sentence.embedding, cosine. It populates in the background; poll list_indexes until its state is ONLINE.
// IF NOT EXISTS is a no-op when ANY vector index covers Sentence.embedding, so the store drops a foreign one first.
// Quantization is off (5.23+ turns it on by default): quantized scores reorder near neighbours -- on the tiny
// test graph the 2nd-4th hits differed from exact cosine -- and InitRetrieve must rank as FalkorDB does.
// Parameters:
//   $dim: int  embedding dimension (the artifact's models.embedding_dim)
// Returns: nothing
CREATE VECTOR INDEX sentence_embedding IF NOT EXISTS
FOR (s:Sentence) ON (s.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine',
                       `vector.quantization.enabled`: false}}
