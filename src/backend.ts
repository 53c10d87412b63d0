// `toolgate/backend`: what a backend service needs to check the credential toolgate mints for each
// call, without Temporal: the verifier, the digest that binds a credential to the call's arguments,
// and the minter's public key file reader. Named one export at a time.
export { credentialClockSkewSeconds, verifyCredential } from './keys/credential-token';
export type {
  CredentialRefusal,
  CredentialVerification,
  ExpectedCredentialScope,
  VerifyCredentialInput,
} from './keys/credential-token';
export { maxCredentialSeconds } from './shared/approval';
export type { CredentialClaims } from './shared/approval';
export { canonicalJson, digestOf } from './shared/canonical-json';
export { publicKeyHex, readPublicKeyHex } from './keys/key-files';
