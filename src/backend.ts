// `toolgate/backend`: what a backend service needs to check the credential toolgate mints for each
// call, without Temporal: the verifier, the digest that binds a credential to the call's arguments,
// and the minter's public key file reader. Named one export at a time.
export { credentialClockSkewSeconds, verifyCredential } from './credentials/credential-token';
export type {
  CredentialRefusal,
  CredentialVerification,
  ExpectedCredentialScope,
  VerifyCredentialInput,
} from './credentials/credential-token';
export { maxCredentialSeconds } from './approvals/protocol';
export type { CredentialClaims } from './approvals/protocol';
export { canonicalJson, digestOf } from './shared/canonical-json';
export { publicKeyHex, readPublicKeyHex } from './keys/key-files';
// For a backend's own tests: a credential signed as the minter signs one (with a test key), or with
// claims no minter would sign, to check that the verifier above refuses it.
export { signCredential } from './credentials/credential-token';
// For a receiver of toolgate's approval webhooks: the check of their HMAC signature and timestamp.
export { verifyWebhookSignature } from './notifications/webhook-signature';
export type { WebhookVerification } from './notifications/webhook-signature';
