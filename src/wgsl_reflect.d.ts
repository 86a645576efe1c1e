// Types for the ESM build of wgsl_reflect, which the package ships without its own declaration path.
declare module 'wgsl_reflect/wgsl_reflect.module.js' {
  export * from 'wgsl_reflect';
}
