// drop_vector_index (Neo4j): remove sentence_embedding (before loading an artifact of another dimension).
// Parameters: none. Returns: nothing.
DROP INDEX sentence_embedding IF EXISTS
