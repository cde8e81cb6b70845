// Alt text and credit of the shipped photos (from images/LICENSES.md), and
// the gallery's order: the first is the hero, the page's LCP element.
export const ORDER = ['rocket.jpg', 'astronaut-1mp.jpg', 'coffee.jpg', 'chelsea.webp', 'retina.jpg', 'chelsea.png', 'astronaut.jpg'];

export const CAPTIONS = {
  'rocket.jpg': ['A Falcon 9 rocket lifting off with DSCOVR', 'SpaceX, public domain'],
  'astronaut-1mp.jpg': ['Portrait of astronaut Eileen Collins (1 MP upscale)', 'NASA, public domain'],
  'astronaut.jpg': ['Portrait of astronaut Eileen Collins', 'NASA, public domain'],
  'coffee.jpg': ['A cup of coffee with latte art', 'Rachel Michetti, CC0'],
  'chelsea.png': ['Chelsea the cat (PNG source)', 'Stefan van der Walt, CC0'],
  'chelsea.webp': ['Chelsea the cat (WebP source)', 'Stefan van der Walt, CC0'],
  'retina.jpg': ['Fundus photograph of a normal left eye', 'Mikael Häggström, CC0'],
};
