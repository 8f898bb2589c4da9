//! Charts as minimal SVG, legible in print and without colour.
