// create_vector_index (Neo4j 5.13+): vector index sentence_embedding over Sentence.embedding, cosine.
// It populates in the background; poll list_indexes until its state is ONLINE.
// Parameters:
//   $dim: int  embedding dimension (the artifact's models.embedding_dim)
// Returns: nothing
CREATE VECTOR INDEX sentence_embedding IF NOT EXISTS
FOR (s:Sentence) ON (s.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}}
