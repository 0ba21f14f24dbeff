/** Where an agent option's value came from; later kinds win: default < file < env < flag. */
export type AgentConfigSource =
  | { readonly kind: 'default' }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'env'; readonly variable: string }
  | { readonly kind: 'flag'; readonly flag: string };
