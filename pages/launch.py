"""Launch page (placeholder until its issue lands)."""

import streamlit as st

st.title("Launch")
st.info("This page is being built.")
