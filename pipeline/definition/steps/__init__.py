"""One module per step builder of the definition; ``common`` holds what several job steps share."""
