// What an image name may look like: lowercase letters, digits and dashes,
// then one known extension. Nothing else (no dots, slashes, percent signs)
// can reach the lookup, so a path can never leave the image folder; the
// name must also be in the build's manifest.
export const IMAGE_NAME = /^[a-z0-9][a-z0-9-]{0,63}\.(?:jpg|png|webp)$/;
