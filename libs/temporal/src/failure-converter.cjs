// The failure converter of every client and worker: `DataConverter.failureConverterPath` names this
// module, so the worker loads it both in its own thread (with `require`, hence CommonJS: the SDK
// cannot `require` the project's ES modules under Jest) and inside the workflow bundle (webpack).
// A failure's message and stack trace move into `encodedAttributes`, a payload that the payload
// codec encrypts like any other; the history keeps only "Encoded failure" in plain text, while the
// failure's type (our error code) and its retry flag stay readable for Temporal's retry logic.
// It imports only @temporalio/common: it runs in the workflow sandbox.
'use strict';
/* global require, exports */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS on purpose (above)
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
