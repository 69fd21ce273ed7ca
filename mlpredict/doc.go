// Package mlpredict is the table that ML_PREDICT(TABLE t, MODEL m,
// DESCRIPTOR(...)) reads: t's rows followed by the model's OUTPUT columns.
// Its Source wraps t's: each batch t's stream hands out is passed to the
// model (model.Predictor), several batches at once, and the results are
// handed to the reader in the order their calls finish, so that a slow
// call holds back only its own batch.
//
// What becomes of each row's record stays with t's source and the reader:
// a row the model answered goes on, and its record is accepted when the
// reader settles the batch that holds it (the Acker of a result batch
// maps its rows to the source batch's); a row whose calls failed in a way
// worth retrying has its record released, so that the share group hands
// it out again; a row the model refused is an evaluation error of that
// row, settled by the table's 'scan.on-eval-error' (flow.RowFailer), or
// rejected when the table has no such policy, since asking again gives
// the same answer. No record is settled before its batch reached the
// reader, so the source keeps its lock renewed meanwhile.
//
// It may import flow (the runtime contracts), table (its errors), model and
// options; it never imports the planner (query) nor a connector, whose source
// it wraps through flow's contracts only. The planner sees an ordinary table:
// the engine (package kshare) makes it.
package mlpredict
