export * from './transport-security.js';
