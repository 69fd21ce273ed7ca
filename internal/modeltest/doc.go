// Package modeltest is a model server for tests, on 127.0.0.1 only: it
// speaks OpenAI's chat completions (/v1/chat/completions) and embeddings
// (/v1/embeddings), and answers plain JSON rows (/predict) for the 'http'
// provider. A test scripts what it answers, how slowly, and which requests
// fail how: 429s with Retry-After, 5xx statuses, malformed bodies, answers
// slower than a timeout, dropped connections. It records every request.
//
// Nothing here reaches beyond the loopback interface.
//
// It imports nothing of kshare's: the tests of package model, of the
// engine's ML_PREDICT and of the command line talk to it over HTTP, as
// they would to a real server.
package modeltest
