// The meta-schema packages ship JSON Schemas without types.
declare module '@open-rpc/meta-schema' {
  const schema: { default: Record<string, any> };
  export = schema;
}
declare module '@json-schema-tools/meta-schema' {
  const schema: { default: Record<string, any> };
  export = schema;
}
