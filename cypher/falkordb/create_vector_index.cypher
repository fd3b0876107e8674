// create_vector_index (FalkorDB): HNSW index over Sentence.embedding (vecf32), cosine.
// The index builds in the background; poll list_indexes until its status is OPERATIONAL.
// Parameters:
//   $dim: int              embedding dimension (the artifact's models.embedding_dim)
//   $ef_construction: int  HNSW candidates while building (build time vs graph quality)
//   $ef_runtime: int       HNSW candidates per search (recall vs latency; a k above it widens the search)
// Returns: nothing
CREATE VECTOR INDEX FOR (s:Sentence) ON (s.embedding)
OPTIONS {dimension: $dim, similarityFunction: 'cosine', M: 16, efConstruction: $ef_construction, efRuntime: $ef_runtime}
