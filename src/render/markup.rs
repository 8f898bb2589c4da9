//! Author Markdown to safe Markdown and Typst markup; escaping of plain text.
