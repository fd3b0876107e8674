// vector_top_k (Neo4j): approximate k nearest sentences by cosine.
// Neo4j's cosine score is (1 + cos) / 2 in [0, 1], so similarity = 2 * score - 1, in [-1, 1].
// Parameters:
//   $vector: list<float>  query embedding (same dimension as the index)
//   $k: int               number of neighbours
// Returns: id (sentence id), similarity (float, cosine)
// Order: similarity descending, ties by id
CALL db.index.vector.queryNodes('sentence_embedding', $k, $vector) YIELD node, score
RETURN node.id AS id, 2.0 * score - 1.0 AS similarity
ORDER BY similarity DESC, id
