// @countersign/client: the TypeScript SDK of countersign's agent API.
//
// An agent asks for a write, a person countersigns it, and countersign makes
// exactly the approved write, once, under a key fixed when the agent decided.

export { Client, MAX_EDIT_HOPS, type CallOptions, type ClientOptions, type WaitOptions } from "./client.js";
export type { ListParams, OutcomeParams, RequestParams } from "./calls.js";
export { canonical, checkNumber, NumberError } from "./canonical.js";
export {
  AlreadyDecidedError,
  AlreadyResolvedError,
  APIError,
  CallbackNotConfiguredError,
  CountersignError,
  DeniedByPolicyError,
  NotAgentExecutedError,
  NotApprovedError,
  OutcomeConflictError,
  RECEIPT_ERRORS,
  ReceiptEffectError,
  ReceiptError,
  ReceiptExpiredError,
  ReceiptMalformedError,
  ReceiptMissingError,
  ReceiptOtherKeyError,
  ReceiptOtherToolError,
  ReceiptSignatureError,
  ReceiptUnknownKeyError,
  RejectedError,
  WriteFailedError,
  type ReceiptClaims,
  ERRORS,
  InternalError,
  InvalidEffectError,
  InvalidRequestError,
  KeyReusedError,
  MalformedJSONError,
  MethodNotAllowedError,
  NoLongerApproverError,
  NotApproverError,
  NotFoundError,
  NothingToRedriveError,
  PrunedError,
  SelfApprovalError,
  SignatureError,
  StaleCardError,
  TooLargeError,
  UnauthorizedError,
  UnavailableError,
  UnknownToolError,
  UnsupportedMediaTypeError,
  WaitTimeoutError,
  type APIErrorInit,
  type Violation,
} from "./errors.js";
export {
  type Approval, type GatedCallOptions, type GatedFunction, type GatedOptions, type GatedParams, type GatedResult,
} from "./gated.js";
export { DEFAULT_JOURNAL_DIR } from "./journal.js";
export { JsonNumber, parseJSON } from "./json-number.js";
export {
  checkClientKey, CLIENT_KEY_PUNCTUATION, hasKeyPrefix, intentKey, InvalidKeyError, KEY_PREFIX, type Effect, type Step,
} from "./key.js";
export {
  requestFromJSON,
  type Callback,
  type Decision,
  type Execution,
  type ExecutionState,
  type Page,
  type Policy,
  type PolicyVerdict,
  type ProviderResponse,
  type Request,
  type RequestPolicy,
  type Status,
  type Tool,
  type Verdict,
  type Vote,
} from "./request.js";
export {
  effectDigest, fetchVerifier, RECEIPT_ALG, RECEIPT_HEADER, RECEIPT_TYPE, ReceiptVerifier, type JWKS, type ReceiptVerifierOptions,
  type ReceiptWant,
} from "./receipt.js";
export { DEFAULT_TOLERANCE, SIGNATURE_HEADER, verifySignature, type VerifyOptions } from "./signature.js";
export { ConnectionError, ConnectionTimeoutError } from "./transport.js";
export { VERSION } from "./version.js";
