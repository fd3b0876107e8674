// drop_index (Neo4j): remove one index by name, if it exists (the vector index before loading an artifact
// of another dimension, or a foreign vector index on Sentence.embedding that would shadow ours).
// Parameters:
//   $name: string  index name (Neo4j accepts the name as a parameter: never spliced into the text)
// Returns: nothing
DROP INDEX $name IF EXISTS
