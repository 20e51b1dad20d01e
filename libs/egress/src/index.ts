// The guard of every outbound call the service makes (fetch_url, MCP servers, webhooks, model providers): which
// addresses may be reached, and connections pinned to the addresses that were checked.
export {
  HostAllowList,
  checkResolvedHost,
  classifyAddress,
  classifyIp,
  parseCidr,
  parseIp,
  type AddressKind,
  type ResolvedAddress,
} from './address.policy.js';
export {
  addressesOf,
  checkedDestination,
  describeNetworkError,
  DestinationRefused,
  literalAddressRefusal,
  pinnedLookup,
  systemResolve,
  type Resolve,
} from './destination.js';
export { guardedFetch, type GuardedFetch, type GuardedFetchOptions } from './guarded-fetch.js';
